//! What every kind of drive answers: its device behind the block-device interface, what the
//! results say about it, and its clock in a timed run. Each kind lives in its own file
//! (`flash.rs`, `zns.rs`, `smr.rs`, `dmzoned.rs`, `tiering.rs`); adding one is its file, an arm
//! in [`super::build`] and the plan's `DriveConfig`.

use crate::results::{HostDeviceRow, HostPoint, TierTraffic};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::Result;
use wafsim_core::image::SavesImage;
use wafsim_core::{BlockDevice, Device, DeviceConfig};

/// What every drive's device is: a block device whose whole state goes to and comes back from
/// a drive image (`wafsim run --save-images`, `[history] kind = "image"`).
pub trait DriveDevice: BlockDevice + SavesImage {}

impl<T: BlockDevice + SavesImage> DriveDevice for T {}

/// The engine's record of one timed phase on one drive, with the host layer's state samples
/// where the drive has a host layer that takes them (dm-zoned).
pub struct TimedPhase {
    /// What the timing engine measured.
    pub run: wafsim_time::TimedRun,
    /// The host layer's state at each log interval.
    pub host_points: Vec<HostPoint>,
}

/// What a host layer adds to a variant's results, beyond the counters every drive has. Asked
/// at the end of the run (`devices`) and at every time-series sample (`tiers`).
#[derive(Debug, Clone, Default)]
pub struct LayerRows {
    /// Traffic the layer sent to each of its devices so far.
    pub devices: Vec<HostDeviceRow>,
    /// A tiering layer's traffic per tier so far: (hot, cold).
    pub tiers: Option<(TierTraffic, TierTraffic)>,
}

/// The clock's figures a timed run reports (cumulative since the clock started).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClockFigures {
    /// Rated P/E cycles of the NAND (0 for disks).
    pub pe_cycles: u32,
    /// Head-busy time of mechanical disks (positioning and transfer, summed over disks).
    pub head_busy_ns: u64,
    /// Dies of the NAND timeline (0 for disks).
    pub dies: u32,
    /// Mechanical disks on the clock.
    pub disks: u32,
}

/// One kind of drive. Commands go through [`DriveModel::device_mut`] (dispatched once per
/// batch); everything else here is asked a few times per phase.
pub trait DriveModel: Send {
    /// The drive behind the block-device interface, and its drive images.
    fn device(&self) -> &dyn DriveDevice;
    /// The same, for commands (and loading an image).
    fn device_mut(&mut self) -> &mut dyn DriveDevice;
    /// "a ZNS drive", "an SMR disk": the kind in a sentence.
    fn what(&self) -> &'static str;
    /// Placement and GC policy as the results header prints them, where the kind decides them
    /// (None: the experiment's device config's).
    fn describe(&self, spec: &ExperimentSpec, cfg: &DeviceConfig) -> Option<(String, String)>;
    /// Logical capacity in bytes (a zoned drive: its zones' LBA space).
    fn logical_bytes(&self) -> u64;
    /// Physical capacity in bytes (a ZNS drive: its zone capacities).
    fn physical_bytes(&self) -> u64;
    /// Erase count of every erase unit (none on a disk).
    fn erase_counts(&self) -> &[u32] {
        &[]
    }
    /// The flash FTL, if this is one.
    fn flash(&self) -> Option<&Device> {
        None
    }
    /// The flash FTL, if this is one, for commands outside the interface (live pacing).
    fn flash_mut(&mut self) -> Option<&mut Device> {
        None
    }
    /// A host layer over several devices (which then has no single over-provisioning): what
    /// it adds to the results so far. None: a drive, no layer.
    fn layer(&self) -> Option<LayerRows> {
        None
    }
    /// Read the timing configuration of `spec` for this drive and keep it; false when the run
    /// is untimed. Checked before the run starts.
    fn configure_timing(&mut self, spec: &ExperimentSpec) -> Result<bool>;
    /// Start the clock from the kept configuration (at the start of the drive's timed run).
    fn start_clock(&mut self, log_ns: Option<u64>) -> Result<()>;
    /// Run one phase's jobs on the clock, under `watch` if the phase has one (which may end it
    /// early: steady, or a layer full).
    fn run_timed(&mut self, jobs: Vec<wafsim_time::JobSpec>, opts: &wafsim_time::EngineOptions, watch: Option<&mut dyn wafsim_time::Watch>, p: &PhaseSpec) -> Result<TimedPhase>;
    /// The clock's figures.
    fn clock(&self) -> ClockFigures;
}

/// The clock a drive has in a timed run: its configuration until the run starts, then its
/// timeline.
pub enum Clock<C, T> {
    /// Untimed.
    Off,
    /// Configured, not started.
    Configured(C),
    /// Running.
    Running(T),
}

impl<C, T> Clock<C, T> {
    /// Keep `c` (None: untimed); whether it was kept.
    pub fn configure(&mut self, c: Option<C>) -> bool {
        *self = c.map_or(Clock::Off, Clock::Configured);
        matches!(self, Clock::Configured(_))
    }

    /// Start the timeline `start` makes of the configuration.
    pub fn start(&mut self, start: impl FnOnce(C) -> Result<T>) -> Result<()> {
        match std::mem::replace(self, Clock::Off) {
            Clock::Configured(c) => *self = Clock::Running(start(c)?),
            other => *self = other,
        }
        Ok(())
    }

    /// The running timeline.
    pub fn running(&mut self) -> &mut T {
        match self {
            Clock::Running(t) => t,
            _ => panic!("a timed phase runs on a started clock"),
        }
    }

    /// The running timeline, if started.
    pub fn get(&self) -> Option<&T> {
        match self {
            Clock::Running(t) => Some(t),
            _ => None,
        }
    }
}
