//! A flash SSD with a device FTL (conventional, streams, FDP): the core's `Device`, timed by
//! the flash model (NAND dies and channels).

use super::model::{Clock, ClockFigures, DriveDevice, DriveModel, TimedPhase};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, Result};
use wafsim_core::blockdev::MediaDevice;
use wafsim_core::{Device, DeviceConfig};
use wafsim_time::{Timeline, TimingConfig};

/// A drive timed by the NAND model (a flash FTL, or a ZNS drive: `zns.rs`) and its clock.
pub struct NandDrive<D> {
    pub(super) dev: D,
    clock: Clock<TimingConfig, Timeline>,
}

/// A flash drive and its clock.
pub type FlashDrive = NandDrive<Device>;

impl<D: MediaDevice> NandDrive<D> {
    pub(super) fn with(dev: D) -> NandDrive<D> {
        NandDrive { dev, clock: Clock::Off }
    }

    pub(super) fn configure(&mut self, c: Option<TimingConfig>) -> bool {
        self.clock.configure(c)
    }

    /// Start the NAND timeline over the device (it turns on the device's media log).
    pub(super) fn start(&mut self) -> Result<()> {
        let dev = &mut self.dev;
        self.clock.start(|c| Ok(Timeline::new(c, dev)))
    }

    pub(super) fn run(&mut self, jobs: Vec<wafsim_time::JobSpec>, opts: &wafsim_time::EngineOptions, watch: Option<&mut dyn wafsim_time::Watch>) -> Result<TimedPhase> {
        let run = wafsim_time::run_on_watched_if(&mut wafsim_time::FlashTimed::new(&mut self.dev, self.clock.running()), jobs, opts, watch)?;
        Ok(TimedPhase { run, host_points: Vec::new() })
    }

    pub(super) fn figures(&self) -> ClockFigures {
        self.clock.get().map_or_else(ClockFigures::default, |tl| ClockFigures { pe_cycles: tl.cfg.nand.pe_cycles, dies: tl.cfg.dies, ..Default::default() })
    }
}

impl FlashDrive {
    /// The drive of `cfg`.
    pub fn new(cfg: DeviceConfig) -> Result<FlashDrive> {
        Ok(NandDrive::with(Device::new(cfg).map_err(|e| anyhow!("{e}"))?))
    }
}

impl DriveModel for FlashDrive {
    fn device(&self) -> &dyn DriveDevice {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut dyn DriveDevice {
        &mut self.dev
    }
    fn what(&self) -> &'static str {
        "a flash drive"
    }
    fn describe(&self, _: &ExperimentSpec, _: &DeviceConfig) -> Option<(String, String)> {
        None
    }
    fn logical_bytes(&self) -> u64 {
        self.dev.config().logical_bytes
    }
    fn physical_bytes(&self) -> u64 {
        self.dev.geometry().physical_units() * self.dev.config().mapping_unit as u64
    }
    fn erase_counts(&self) -> &[u32] {
        self.dev.erase_counts()
    }
    fn flash(&self) -> Option<&Device> {
        Some(&self.dev)
    }
    fn flash_mut(&mut self) -> Option<&mut Device> {
        Some(&mut self.dev)
    }
    fn configure_timing(&mut self, spec: &ExperimentSpec) -> Result<bool> {
        Ok(self.configure(crate::plan::timing::timing_config(spec, self.dev.config())?))
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
