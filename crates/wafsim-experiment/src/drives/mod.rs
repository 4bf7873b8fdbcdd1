//! The devices of a variant and how the experiment's namespaces map onto them: one shared
//! drive, or one drive per namespace (dedicated layout). I/O addressed to the experiment's
//! namespaces is routed to the right drive, so every layout is driven by the same loop and
//! dedicated drives see their I/O in the same interleaved order as a shared drive would.
//!
//! Every drive is driven through the block-device interface ([`BlockDevice`]); [`Drive`] is the
//! closed set of device kinds, dispatched once per command batch.

use crate::parts::Target;
use crate::plan::DriveConfig;
use anyhow::{anyhow, Result};
use wafsim_core::blockdev::{BlockDevice, Completion, ZoneAction, ZoneGeometry, ZoneMgmtDone, ZoneTarget};
use wafsim_core::plain::PlainDevice;
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::zns::ZnsDevice;
use wafsim_core::zone::{ReportFilter, ZoneDescriptor};
use wafsim_core::{Counters, Device, DeviceConfig, DeviceError, Io, Op, Pid};
use wafsim_host::{DmZonedConfig, DmZonedDevice, TieringConfig, TieringDevice};
use wafsim_workload::fio::ZbdZones;

/// I/Os per batch handed to the device (the device prefetches map entries within a batch).
pub(crate) const BATCH: usize = 4096;

/// Block size of the sequential precondition fill.
const PRECONDITION_BS: u64 = 128 * 1024;

/// One drive of a variant.
// A run holds a handful of drives; the variants' size difference costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
pub enum Drive {
    /// An SSD with a device FTL (conventional, streams, FDP).
    Flash(Device),
    /// A zoned namespace SSD.
    Zns(ZnsDevice),
    /// A host-managed SMR disk.
    Smr(SmrDevice),
    /// A host layer over several devices: dm-zoned.
    DmZoned(Box<LayerDrive<DmZonedDevice<PlainDevice, SmrDevice>>>),
    /// A host layer over two flash drives: hot/cold tiering.
    Tiering(Box<LayerDrive<TieringDevice<Device, Device>>>),
}

/// A host layer over several devices, as one drive of a variant. Its counters are the layer's
/// user-level ones, with media units standing for every byte the layer's devices took: host
/// bytes are what the user wrote to the layer, so the variant's WAF is the layer's (dm-zoned:
/// user data, reclaim copies, zero-fill and metadata sent to its devices; tiering: both drives'
/// NAND programs, i.e. application to NAND).
pub struct LayerDrive<D> {
    pub dev: D,
    counters: Counters,
    /// The experiment's counting unit (the disks' block size; the capacity drive's mapping
    /// unit), bytes.
    unit: u64,
}

/// What a [`LayerDrive`] counts from its layer.
pub trait LayerMedia {
    /// The layer's user-level counters.
    fn user_counters(&self) -> &Counters;
    /// Bytes the layer's devices took (see [`LayerDrive`]).
    fn media_bytes(&self) -> u64;
    /// Erases on the layer's devices.
    fn erases(&self) -> u64;
}

impl LayerMedia for DmZonedDevice<PlainDevice, SmrDevice> {
    fn user_counters(&self) -> &Counters {
        self.layer().counters()
    }
    fn media_bytes(&self) -> u64 {
        self.layer().device_bytes_written()
    }
    fn erases(&self) -> u64 {
        0
    }
}

impl LayerMedia for TieringDevice<Device, Device> {
    fn user_counters(&self) -> &Counters {
        self.layer().counters()
    }
    /// NAND bytes of both drives (each counts in its own mapping unit).
    fn media_bytes(&self) -> u64 {
        [self.hot(), self.cold()].iter().map(|d| d.counters().media_units() * d.config().mapping_unit as u64).sum()
    }
    fn erases(&self) -> u64 {
        self.hot().counters().erases + self.cold().counters().erases
    }
}

impl<D: BlockDevice + LayerMedia> LayerDrive<D> {
    fn new(dev: D, unit: u64) -> LayerDrive<D> {
        let mut d = LayerDrive { dev, counters: Counters::default(), unit };
        d.refresh();
        d
    }

    /// Rebuild the counters from the layer's (after every command batch).
    pub(crate) fn refresh(&mut self) {
        let mut c = self.dev.user_counters().clone();
        c.host_units = c.host_write_bytes.div_ceil(self.unit);
        c.gc_units = self.dev.media_bytes().div_ceil(self.unit).saturating_sub(c.host_units);
        c.erases = self.dev.erases();
        if let Some(n) = c.namespaces.first_mut() {
            n.host_units = c.host_units;
            n.gc_units = c.gc_units;
        }
        self.counters = c;
    }

    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        let r = self.dev.submit(io);
        self.refresh();
        r
    }

    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        let r = self.dev.submit_batch(ios);
        self.refresh();
        r
    }
}

/// dm-zoned over `disks` copies of the SMR disk `disk`, with a plain cache device of
/// `cache_bytes` or none.
fn dm_zoned(disk: SmrConfig, disks: u32, cache_bytes: Option<u64>, reserved_zones: u32) -> Result<LayerDrive<DmZonedDevice<PlainDevice, SmrDevice>>> {
    let cache = cache_bytes.map(|b| PlainDevice::new(b, disk.block_size).map_err(|e| anyhow!("host.cache_size: {e}"))).transpose()?;
    let disks = (0..disks).map(|_| SmrDevice::new(disk.clone()).map_err(|e| anyhow!("{e}"))).collect::<Result<Vec<_>>>()?;
    let dev = DmZonedDevice::new(cache, disks, &DmZonedConfig::with_reserved(reserved_zones)).map_err(|e| anyhow!("[host] dm-zoned: {e} (a scaled run shrinks the zones, not dm-zoned's metadata per zone: a larger --scale may help)"))?;
    Ok(LayerDrive::new(dev, disk.block_size as u64))
}

/// Tiering over a hot and a cold flash drive; the experiment counts in the cold drive's unit.
fn tiering(hot: DeviceConfig, cold: DeviceConfig, extent_bytes: u64) -> Result<LayerDrive<TieringDevice<Device, Device>>> {
    let unit = cold.mapping_unit as u64;
    let hot = Device::new(hot).map_err(|e| anyhow!("host.hot: {e}"))?;
    let cold = Device::new(cold).map_err(|e| anyhow!("{e}"))?;
    let cfg = TieringConfig { extent_bytes, ..TieringConfig::default() };
    let dev = TieringDevice::new(hot, cold, &cfg).map_err(|e| anyhow!("[host] tiering: {e}"))?;
    Ok(LayerDrive::new(dev, unit))
}

impl Drive {
    pub fn new(cfg: DriveConfig) -> Result<Drive> {
        Ok(match cfg {
            DriveConfig::Flash(c) => Drive::Flash(Device::new(c).map_err(|e| anyhow!("{e}"))?),
            DriveConfig::Zns(c) => Drive::Zns(ZnsDevice::new(c).map_err(|e| anyhow!("{e}"))?),
            DriveConfig::Smr(c) => Drive::Smr(SmrDevice::new(c).map_err(|e| anyhow!("{e}"))?),
            DriveConfig::DmZoned { disk, disks, cache_bytes, reserved_zones } => Drive::DmZoned(Box::new(dm_zoned(disk, disks, cache_bytes, reserved_zones)?)),
            DriveConfig::Tiering { hot, cold, extent_bytes } => Drive::Tiering(Box::new(tiering(hot, cold, extent_bytes)?)),
        })
    }

    /// The flash FTL, if this is one.
    pub fn flash(&self) -> Option<&Device> {
        match self {
            Drive::Flash(d) => Some(d),
            _ => None,
        }
    }

    /// Logical capacity in bytes (a ZNS drive: its zones' LBA space).
    pub fn logical_bytes(&self) -> u64 {
        match self {
            Drive::Flash(d) => d.config().logical_bytes,
            Drive::Zns(z) => z.namespace_bytes(0),
            Drive::Smr(z) => z.namespace_bytes(0),
            Drive::DmZoned(d) => d.dev.namespace_bytes(0),
            Drive::Tiering(d) => d.dev.namespace_bytes(0),
        }
    }

    /// Physical (raw) capacity in bytes: a ZNS drive's zone capacities.
    pub fn physical_bytes(&self) -> u64 {
        match self {
            Drive::Flash(d) => d.geometry().physical_units() * d.config().mapping_unit as u64,
            Drive::Zns(z) => {
                let c = &z.config().zones;
                c.zone_capacity * c.zones as u64 * z.config().block_size as u64
            }
            Drive::Smr(z) => z.namespace_bytes(0),
            Drive::DmZoned(d) => d.dev.disks().iter().map(|z| z.namespace_bytes(0)).sum::<u64>() + d.dev.cache_device().map_or(0, |c| c.namespace_bytes(0)),
            Drive::Tiering(d) => [d.dev.hot(), d.dev.cold()].iter().map(|x| x.geometry().physical_units() * x.config().mapping_unit as u64).sum(),
        }
    }

    /// Erase count of every erase unit.
    pub fn erase_counts(&self) -> &[u32] {
        match self {
            Drive::Flash(d) => d.erase_counts(),
            Drive::Zns(z) => z.erase_counts(),
            // A disk erases nothing.
            Drive::Smr(_) | Drive::DmZoned(_) => &[],
            // Two drives: their erase counts are reported separately (not yet).
            Drive::Tiering(_) => &[],
        }
    }
}

/// A block-device call forwarded to the drive's device (a host layer's queries and zone
/// commands to the layer itself): one line per method instead of one arm per kind.
macro_rules! forward {
    ($self:ident, $dev:ident => $call:expr) => {
        match $self {
            Drive::Flash($dev) => $call,
            Drive::Zns($dev) => $call,
            Drive::Smr($dev) => $call,
            Drive::DmZoned(l) => {
                let $dev = &mut l.dev;
                $call
            }
            Drive::Tiering(l) => {
                let $dev = &mut l.dev;
                $call
            }
        }
    };
    (ref $self:ident, $dev:ident => $call:expr) => {
        match $self {
            Drive::Flash($dev) => $call,
            Drive::Zns($dev) => $call,
            Drive::Smr($dev) => $call,
            Drive::DmZoned(l) => {
                let $dev = &l.dev;
                $call
            }
            Drive::Tiering(l) => {
                let $dev = &l.dev;
                $call
            }
        }
    };
}

impl BlockDevice for Drive {
    // Commands to a host layer go through its `LayerDrive`, which recounts after each.
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        match self {
            Drive::Flash(d) => BlockDevice::submit(d, io),
            Drive::Zns(z) => z.submit(io),
            Drive::Smr(z) => z.submit(io),
            Drive::DmZoned(d) => d.submit(io),
            Drive::Tiering(d) => d.submit(io),
        }
    }
    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        match self {
            Drive::Flash(d) => d.submit_batch(ios),
            Drive::Zns(z) => z.submit_batch(ios),
            Drive::Smr(z) => z.submit_batch(ios),
            Drive::DmZoned(d) => d.submit_batch(ios),
            Drive::Tiering(d) => d.submit_batch(ios),
        }
    }
    fn zone_mgmt_target(&mut self, ns: u32, target: ZoneTarget, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        forward!(self, d => BlockDevice::zone_mgmt_target(d, ns, target, action))
    }
    fn report_zones(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        forward!(ref self, d => BlockDevice::report_zones(d, ns, from, filter))
    }
    fn zone_geometry(&self, ns: u32) -> Option<ZoneGeometry> {
        forward!(ref self, d => BlockDevice::zone_geometry(d, ns))
    }
    fn namespace_count(&self) -> u32 {
        forward!(ref self, d => BlockDevice::namespace_count(d))
    }
    fn namespace_bytes(&self, ns: u32) -> u64 {
        forward!(ref self, d => BlockDevice::namespace_bytes(d, ns))
    }
    fn block_size(&self) -> u32 {
        forward!(ref self, d => BlockDevice::block_size(d))
    }
    // A host layer's counters are the experiment's view of it (see `LayerDrive`).
    fn counters(&self) -> &Counters {
        match self {
            Drive::Flash(d) => d.counters(),
            Drive::Zns(z) => BlockDevice::counters(z),
            Drive::Smr(z) => BlockDevice::counters(z),
            Drive::DmZoned(d) => &d.counters,
            Drive::Tiering(d) => &d.counters,
        }
    }
}

/// The drives of one variant.
pub struct Stack {
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
        let devices = drives.into_iter().map(Drive::new).collect::<Result<Vec<_>>>()?;
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
