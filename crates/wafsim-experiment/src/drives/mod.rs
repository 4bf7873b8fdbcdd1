//! The devices of a variant and how the experiment's namespaces map onto them: one shared
//! drive, or one drive per namespace (dedicated layout). I/O addressed to the experiment's
//! namespaces is routed to the right drive, so every layout is driven by the same loop and
//! dedicated drives see their I/O in the same interleaved order as a shared drive would.
//!
//! Every drive is driven through the block-device interface ([`BlockDevice`]); each kind of drive
//! (flash, ZNS, SMR, dm-zoned, tiering) lives in its own file and answers what the runner asks
//! of it through [`model::DriveModel`]: build, describe, capacities, timing.

use crate::parts::Target;
use model::DriveModel;
use crate::plan::DriveConfig;
use anyhow::Result;

mod dmzoned;
mod flash;
pub mod model;
mod smr;
mod tiering;
mod zns;
use wafsim_core::blockdev::{BlockDevice, Completion, ZoneAction, ZoneGeometry, ZoneMgmtDone, ZoneTarget};
use wafsim_core::zone::{ReportFilter, ZoneDescriptor};
use wafsim_core::{Counters, Device, DeviceConfig, DeviceError, Io, Op, Pid};
use wafsim_workload::fio::ZbdZones;

/// I/Os per batch handed to the device (the device prefetches map entries within a batch).
pub(crate) const BATCH: usize = 4096;

/// Block size of the sequential precondition fill.
const PRECONDITION_BS: u64 = 128 * 1024;

/// One drive of a variant: a kind of drive (see [`model::DriveModel`] and the kinds' files),
/// with its device and, in a timed run, its clock. Commands reach the device through one
/// dynamic call per batch; nothing per mapping unit.
pub struct Drive(Box<dyn DriveModel>);

/// Build the drive `cfg` describes.
pub fn build(cfg: DriveConfig) -> Result<Drive> {
    Ok(Drive(match cfg {
        DriveConfig::Flash(c) => Box::new(flash::FlashDrive::new(c)?),
        DriveConfig::Zns(c) => Box::new(zns::ZnsDrive::new(c)?),
        DriveConfig::Smr(c) => Box::new(smr::SmrDrive::new(c)?),
        DriveConfig::DmZoned { disk, disks, cache_bytes, reserved_zones } => Box::new(dmzoned::DmZonedDrive::new(disk, disks, cache_bytes, reserved_zones)?),
        DriveConfig::Tiering { hot, cold, extent_bytes } => Box::new(tiering::TieringDrive::new(hot, cold, extent_bytes)?),
    }))
}

impl Drive {
    /// The drive's kind, for everything but commands.
    pub fn model(&self) -> &dyn DriveModel {
        &*self.0
    }

    /// The same, mutable (timed runs).
    pub fn model_mut(&mut self) -> &mut dyn DriveModel {
        &mut *self.0
    }

    /// The flash FTL, if this is one.
    pub fn flash(&self) -> Option<&Device> {
        self.0.flash()
    }

    /// The flash FTL, if this is one, mutable.
    pub fn flash_mut(&mut self) -> Option<&mut Device> {
        self.0.flash_mut()
    }

    /// Logical capacity in bytes (a ZNS drive: its zones' LBA space).
    pub fn logical_bytes(&self) -> u64 {
        self.0.logical_bytes()
    }

    /// Physical (raw) capacity in bytes: a ZNS drive's zone capacities.
    pub fn physical_bytes(&self) -> u64 {
        self.0.physical_bytes()
    }

    /// Erase count of every erase unit.
    pub fn erase_counts(&self) -> &[u32] {
        self.0.erase_counts()
    }
}

impl BlockDevice for Drive {
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        self.0.device_mut().submit(io)
    }
    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        self.0.device_mut().submit_batch(ios)
    }
    fn zone_mgmt_target(&mut self, ns: u32, target: ZoneTarget, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        self.0.device_mut().zone_mgmt_target(ns, target, action)
    }
    fn report_zones(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        self.0.device().report_zones(ns, from, filter)
    }
    fn zone_geometry(&self, ns: u32) -> Option<ZoneGeometry> {
        self.0.device().zone_geometry(ns)
    }
    fn namespace_count(&self) -> u32 {
        self.0.device().namespace_count()
    }
    fn namespace_bytes(&self, ns: u32) -> u64 {
        self.0.device().namespace_bytes(ns)
    }
    fn block_size(&self) -> u32 {
        self.0.device().block_size()
    }
    fn counters(&self) -> &Counters {
        self.0.device().counters()
    }
}

/// The drives of one variant.
pub struct Stack {
    /// The built drives: one, or one per namespace with `layout = "dedicated"` (drive i holds
    /// namespace i).
    pub devices: Vec<Drive>,
    /// The experiment's device config (all namespaces, as on a shared drive).
    pub cfg: DeviceConfig,
    /// Per experiment namespace: (drive, namespace index on that drive).
    route: Vec<(u32, u32)>,
    scratch: Vec<Vec<Io>>,
}

impl Stack {
    /// One drive per config; `cfg` is the experiment's config. With one drive the namespaces
    /// keep their indices; with several, drive i holds namespace i alone.
    pub fn new(cfg: DeviceConfig, drives: Vec<DriveConfig>) -> Result<Stack> {
        let shared = drives.len() == 1;
        assert!(shared || drives.len() == cfg.namespaces.len(), "dedicated layout: one drive per namespace");
        let devices = drives.into_iter().map(build).collect::<Result<Vec<_>>>()?;
        let route = (0..cfg.namespaces.len() as u32).map(|i| if shared { (0, i) } else { (i, 0) }).collect();
        let scratch = devices.iter().map(|_| Vec::new()).collect();
        Ok(Stack { devices, cfg, route, scratch })
    }

    /// Submit I/Os addressed to the experiment's namespaces.
    pub fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        if self.devices.len() == 1 {
            return self.devices[0].submit_batch(ios);
        }
        for b in &mut self.scratch {
            b.clear();
        }
        for io in ios {
            let (d, ns) = self.route[io.ns as usize];
            self.scratch[d as usize].push(Io { ns, ..*io });
        }
        for (dev, b) in self.devices.iter_mut().zip(&self.scratch) {
            if !b.is_empty() {
                dev.submit_batch(b)?;
            }
        }
        Ok(())
    }

    /// All namespaces, addressed as the experiment numbers them.
    pub fn target(&self) -> Target<'_> {
        Target {
            cfg: &self.cfg,
            ns_bytes: self.route.iter().map(|&(d, ns)| self.devices[d as usize].namespace_bytes(ns)).collect(),
            io_ns: (0..self.route.len() as u32).map(Some).collect(),
            zones: self.zones(),
            zbd: self.zbd(),
        }
    }

    /// The namespaces of drive `d` alone, addressed as that drive numbers them (timed runs
    /// drive each drive on its own timeline).
    pub fn device_target(&self, d: usize) -> Target<'_> {
        Target {
            cfg: &self.cfg,
            ns_bytes: self.route.iter().map(|&(dd, ns)| self.devices[dd as usize].namespace_bytes(ns)).collect(),
            io_ns: self.route.iter().map(|&(dd, ns)| (dd as usize == d).then_some(ns)).collect(),
            zones: self.zones(),
            zbd: self.zbd(),
        }
    }

    /// Zone geometry per experiment namespace (None where not zoned).
    fn zones(&self) -> Vec<Option<ZoneGeometry>> {
        self.route.iter().map(|&(d, ns)| self.devices[d as usize].zone_geometry(ns)).collect()
    }

    /// Per zoned experiment namespace, its zones as they are now, for fio zonemode=zbd jobs
    /// (fio reads the zone report when a job starts).
    fn zbd(&self) -> Vec<Option<ZbdZones>> {
        self.route
            .iter()
            .map(|&(d, ns)| {
                let dev = &self.devices[d as usize];
                let g = dev.zone_geometry(ns)?;
                let report = dev.report_zones(ns, 0, ReportFilter::All).ok()?;
                // The drive's own report always fits its geometry; a mismatch is a bug here.
                Some(ZbdZones::from_report(&g, dev.namespace_bytes(ns), dev.block_size(), &report).unwrap_or_else(|e| panic!("zone report of namespace {ns}: {e}")))
            })
            .collect()
    }

    /// The experiment's name of namespace `ns` of drive `d`.
    pub fn namespace_name(&self, d: usize, ns: u32) -> &str {
        let g = self.route.iter().position(|&r| r == (d as u32, ns)).expect("every drive namespace is an experiment namespace");
        &self.cfg.namespaces[g].name
    }

    /// Logical bytes over all drives.
    pub fn logical_bytes(&self) -> u64 {
        self.devices.iter().map(|d| d.logical_bytes()).sum()
    }
}

/// Counters without the per-namespace and per-frontier lists (for summing across drives).
pub fn strip(c: &Counters) -> Counters {
    let mut t = c.clone();
    t.namespaces.clear();
    t.frontiers.clear();
    t
}

/// Random aging: `bytes` of uniform random writes of `bs` bytes (aligned to `bs`) over the
/// conventional namespaces, each in proportion to its size, seeded by `seed`. Zoned namespaces
/// are left as they are (their host decides where writes go).
pub fn age_random(dev: &mut impl BlockDevice, bs: u64, bytes: u64, seed: u64) -> Result<()> {
    let spans: Vec<(u32, u64)> = (0..dev.namespace_count()).filter(|&ns| dev.zone_geometry(ns).is_none()).map(|ns| (ns, dev.namespace_bytes(ns) / bs)).filter(|&(_, n)| n > 0).collect();
    let total: u64 = spans.iter().map(|s| s.1).sum();
    if total == 0 {
        anyhow::bail!("history.kind = \"random\": the drive has no conventional namespace of at least one {bs}-byte write (zoned namespaces are written by their host)");
    }
    let mut rng = wafsim_core::Rng::derive(seed, 0xA6E);
    let mut left = bytes.div_ceil(bs);
    let mut batch = Vec::with_capacity(BATCH);
    while left > 0 {
        batch.clear();
        for _ in 0..left.min(BATCH as u64) {
            let mut k = rng.below(total);
            let mut ns = spans[0].0;
            for &(n, units) in &spans {
                if k < units {
                    ns = n;
                    break;
                }
                k -= units;
            }
            batch.push(Io { op: Op::Write, ns, offset: k * bs, len: bs as u32, pid: Pid::NONE });
        }
        left -= batch.len() as u64;
        dev.submit_batch(&batch)?;
    }
    Ok(())
}

/// Write each drive of `stack` as a drive image: `path` for one drive, `NAME.dD.EXT` per drive
/// for several ([`image_path`], what `[history] kind = "image"` reads back), each through a
/// temporary file renamed into place, so a failed save leaves no partial image.
pub fn save_images(stack: &Stack, path: &std::path::Path) -> Result<()> {
    use anyhow::Context;
    let n = stack.devices.len();
    for (d, dev) in stack.devices.iter().enumerate() {
        let path = image_path(path, d, n);
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp);
        let write = || -> Result<()> {
            let file = std::fs::File::create(&tmp)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            dev.model().device().save_image_to(&mut out)?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            Ok(())
        };
        write().with_context(|| format!("saving the drive image {}", path.display())).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
    }
    Ok(())
}

/// The image file of drive `d` of `n`: `path` itself for one drive, `NAME.dD.EXT` for several.
pub fn image_path(path: &std::path::Path, d: usize, n: usize) -> std::path::PathBuf {
    if n == 1 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.d{d}.{}", ext.to_string_lossy()),
        None => format!("{stem}.d{d}"),
    };
    path.with_file_name(name)
}

/// Sequential fill of every LBA of every namespace, 128 KiB at a time, round-robin across
/// namespaces (as when every tenant preconditions its disk at once). Zoned namespaces are left
/// as they are (empty zones are a zoned drive's fresh state; its host fills them).
pub fn precondition(dev: &mut impl BlockDevice) -> Result<()> {
    let n = dev.namespace_count();
    let mut pos = vec![0u64; n as usize];
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        for ns in 0..n {
            if dev.zone_geometry(ns).is_some() {
                continue;
            }
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
