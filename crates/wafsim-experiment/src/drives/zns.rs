//! A zoned namespace SSD: the core's `ZnsDevice` (zones on erase units, no device GC), timed by
//! the flash model with its zones striped over the dies.

use super::model::{Clock, ClockFigures, DriveModel, TimedPhase};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, Result};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::{BlockDevice, DeviceConfig};
use wafsim_time::{Timeline, TimingConfig};

/// A ZNS drive and its clock.
pub struct ZnsDrive {
    dev: ZnsDevice,
    clock: Clock<TimingConfig, Timeline>,
}

impl ZnsDrive {
    /// The drive of `cfg`.
    pub fn new(cfg: ZnsConfig) -> Result<ZnsDrive> {
        Ok(ZnsDrive { dev: ZnsDevice::new(cfg).map_err(|e| anyhow!("{e}"))?, clock: Clock::Off })
    }
}

impl DriveModel for ZnsDrive {
    fn device(&self) -> &dyn BlockDevice {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut dyn BlockDevice {
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
        Ok(self.clock.configure(crate::plan::timing::timing_config_zns(spec, self.dev.config())?))
    }
    fn start_clock(&mut self, _: Option<u64>) -> Result<()> {
        let dev = &mut self.dev;
        self.clock.start(|c| Ok(Timeline::new(c, dev)))
    }
    fn run_timed(&mut self, jobs: Vec<wafsim_time::JobSpec>, opts: &wafsim_time::EngineOptions, _: &PhaseSpec) -> Result<TimedPhase> {
        let run = wafsim_time::run_with(&mut self.dev, self.clock.running(), jobs, opts)?;
        Ok(TimedPhase { run, host_points: Vec::new() })
    }
    fn clock(&self) -> ClockFigures {
        self.clock.get().map_or_else(ClockFigures::default, |tl| ClockFigures { pe_cycles: tl.cfg.nand.pe_cycles, dies: tl.cfg.dies, ..Default::default() })
    }
}
