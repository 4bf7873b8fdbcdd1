//! A host layer over several devices as one drive of a variant: the layer's counters restated in
//! the experiment's counting unit after every command.

use wafsim_core::blockdev::{BlockDevice, Completion, ZoneAction, ZoneGeometry, ZoneMgmtDone, ZoneTarget};
use wafsim_core::zone::{ReportFilter, ZoneDescriptor};
use wafsim_core::{Counters, DeviceError, Io};

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

impl<D: BlockDevice + LayerMedia> LayerDrive<D> {
    pub(super) fn new(dev: D, unit: u64) -> LayerDrive<D> {
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

    fn submit_one(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        let r = self.dev.submit(io);
        self.refresh();
        r
    }

    fn submit_all(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        let r = self.dev.submit_batch(ios);
        self.refresh();
        r
    }
}


impl<D: BlockDevice + LayerMedia> BlockDevice for LayerDrive<D> {
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        self.submit_one(io)
    }
    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        self.submit_all(ios)
    }
    fn zone_mgmt_target(&mut self, ns: u32, target: ZoneTarget, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        self.dev.zone_mgmt_target(ns, target, action)
    }
    fn report_zones(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        self.dev.report_zones(ns, from, filter)
    }
    fn zone_geometry(&self, ns: u32) -> Option<ZoneGeometry> {
        self.dev.zone_geometry(ns)
    }
    fn namespace_count(&self) -> u32 {
        self.dev.namespace_count()
    }
    fn namespace_bytes(&self, ns: u32) -> u64 {
        self.dev.namespace_bytes(ns)
    }
    fn block_size(&self) -> u32 {
        self.dev.block_size()
    }
    // The experiment's view of the layer (see `LayerDrive`).
    fn counters(&self) -> &Counters {
        &self.counters
    }
}
