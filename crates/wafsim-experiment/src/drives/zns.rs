//! A zoned namespace SSD: the core's `ZnsDevice` (zones on erase units, no device GC), timed by
//! the flash model with its zones striped over the dies.

use super::flash::NandDrive;
use super::model::{ClockFigures, DriveDevice, DriveModel, TimedPhase};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, Result};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::{BlockDevice, DeviceConfig};

/// A ZNS drive and its clock.
pub type ZnsDrive = NandDrive<ZnsDevice>;

impl ZnsDrive {
    /// The drive of `cfg`.
    pub fn new(cfg: ZnsConfig) -> Result<ZnsDrive> {
        Ok(NandDrive::with(ZnsDevice::new(cfg).map_err(|e| anyhow!("{e}"))?))
    }
}

impl DriveModel for ZnsDrive {
    fn device(&self) -> &dyn DriveDevice {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut dyn DriveDevice {
        &mut self.dev
    }
    fn what(&self) -> &'static str {
        "a ZNS drive"
    }
    fn describe(&self, _: &ExperimentSpec, _: &DeviceConfig) -> Option<(String, String)> {
        Some(("zns".into(), "none (host)".into()))
    }
    fn logical_bytes(&self) -> u64 {
        self.dev.namespace_bytes(0)
    }
    fn physical_bytes(&self) -> u64 {
        let c = &self.dev.config().zones;
        c.zone_capacity * c.zones as u64 * self.dev.config().block_size as u64
    }
    fn erase_counts(&self) -> &[u32] {
        self.dev.erase_counts()
    }
    fn configure_timing(&mut self, spec: &ExperimentSpec) -> Result<bool> {
        Ok(self.configure(crate::plan::timing::timing_config_zns(spec, self.dev.config())?))
    }
    fn start_clock(&mut self, _: Option<u64>) -> Result<()> {
        self.start()
    }
    fn run_timed(&mut self, jobs: Vec<wafsim_time::JobSpec>, opts: &wafsim_time::EngineOptions, watch: Option<&mut dyn wafsim_time::Watch>, _: &PhaseSpec) -> Result<TimedPhase> {
        self.run(jobs, opts, watch)
    }
    fn clock(&self) -> ClockFigures {
        self.figures()
    }
}
