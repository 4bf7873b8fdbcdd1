//! A host-managed SMR disk: the core's `SmrDevice` (the zone state machine with ZBC
//! semantics), timed by the mechanical disk model with Linux zone write plugging.

use super::model::{Clock, ClockFigures, DriveDevice, DriveModel, TimedPhase};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, Result};
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::{BlockDevice, DeviceConfig};
use wafsim_time::hdd::HddConfig;
use wafsim_time::DiskTimeline;

/// The disk model's configuration, its zone size on the device and on the full-size disk.
type DiskTiming = (HddConfig, u64, u64);

/// An SMR disk and its clock.
pub struct SmrDrive {
    dev: SmrDevice,
    clock: Clock<DiskTiming, DiskTimeline>,
}

impl SmrDrive {
    /// The disk of `cfg`.
    pub fn new(cfg: SmrConfig) -> Result<SmrDrive> {
        Ok(SmrDrive { dev: SmrDevice::new(cfg).map_err(|e| anyhow!("{e}"))?, clock: Clock::Off })
    }
}

impl DriveModel for SmrDrive {
    fn device(&self) -> &dyn DriveDevice {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut dyn DriveDevice {
        &mut self.dev
    }
    fn what(&self) -> &'static str {
        "an SMR disk"
    }
    fn describe(&self, _: &ExperimentSpec, _: &DeviceConfig) -> Option<(String, String)> {
        Some(("smr (host-managed)".into(), "none (host)".into()))
    }
    fn logical_bytes(&self) -> u64 {
        self.dev.namespace_bytes(0)
    }
    fn physical_bytes(&self) -> u64 {
        self.dev.namespace_bytes(0)
    }
    fn configure_timing(&mut self, spec: &ExperimentSpec) -> Result<bool> {
        let zone = self.dev.config().zone_size;
        Ok(self.clock.configure(crate::plan::timing::disk_config(spec, self.dev.config())?.map(|(h, disk_zone)| (h, zone, disk_zone))))
    }
    fn start_clock(&mut self, _: Option<u64>) -> Result<()> {
        let conventional = self.dev.config().conventional_zones;
        self.clock.start(|(h, zone, disk_zone)| Ok(DiskTimeline::new(h, zone, disk_zone).map_err(|e| anyhow!("timing.hdd: {e}"))?.with_zone_write_plugging(conventional)))
    }
    fn run_timed(&mut self, jobs: Vec<wafsim_time::JobSpec>, opts: &wafsim_time::EngineOptions, watch: Option<&mut dyn wafsim_time::Watch>, _: &PhaseSpec) -> Result<TimedPhase> {
        let run = wafsim_time::run_on_watched_if(&mut wafsim_time::DiskTimed::new(&mut self.dev, self.clock.running()), jobs, opts, watch)?;
        Ok(TimedPhase { run, host_points: Vec::new() })
    }
    fn clock(&self) -> ClockFigures {
        self.clock.get().map_or_else(ClockFigures::default, |tl| ClockFigures { head_busy_ns: tl.busy_ns, disks: 1, ..Default::default() })
    }
}
